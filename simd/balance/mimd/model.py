"""placeholder"""
BiModal = ModelParams = Prediction = bimodal_fit = predict = None
